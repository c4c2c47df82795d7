"""The kernel: clock, domain errors, money, limits. Imports nothing of ours; not an app."""
