"""The Model page: the layer list, typed layer editors, model settings and the live summary."""
