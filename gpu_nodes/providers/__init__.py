"""Our dynamic resources: taints, the readiness gate, the claims and the coexistence check."""
