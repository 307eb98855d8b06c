"""What the copies experiment's answers and figures read a sweep's results with: the study's variants and focus
(queries), the anomalies found in a curve, the cache simulation, the skb's shape and how the receive modes are
presented."""
