"""Builders of fake side-run results for the A/B tests."""
