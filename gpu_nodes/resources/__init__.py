"""The Pulumi resources: the fleet, its node groups, and the objects the groups share."""
