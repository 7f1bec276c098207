"""The Training page: the training form, the running job and its live plots."""
