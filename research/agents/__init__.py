"""The job graph and its nodes. Nothing in this package imports Django."""
