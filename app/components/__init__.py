"""Reusable pieces of every dashboard: text with formulas, pictures fed by data sources, the player."""
