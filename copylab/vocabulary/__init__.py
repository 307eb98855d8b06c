"""What an experiment and its implementations are declared with: the records (an Experiment, an Implementation and
its driver's spec), the values of the categorical settings and columns, and the constants the C programs share.

It sits below the declarations (copylab.experiments) and everything that reads them, and imports nothing of copylab
but its bottom layer.
"""
