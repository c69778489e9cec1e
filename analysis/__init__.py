"""Metrics, tables and plots from experiment runs."""
