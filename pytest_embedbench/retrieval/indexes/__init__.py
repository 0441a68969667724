"""The index axis: vector-index engines behind one registry."""
