"""Stack configuration: typed specs, each config field declared once, and the readers that validate them."""
