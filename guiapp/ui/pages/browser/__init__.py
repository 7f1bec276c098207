"""The Browser page: a virtual grid of samples, their statistics and one sample's detail."""
