"""What a sampled profile of a trial is made of: its sides and its categories of function (categories.py)."""
