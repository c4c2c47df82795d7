"""Staying up: database faults (the breaker), health, middleware, the scheduler."""
