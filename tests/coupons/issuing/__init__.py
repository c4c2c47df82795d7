"""The claim's wing (coupons/issuing/): the screen, the decision, the counter and its faults."""
