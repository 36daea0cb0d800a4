"""Where stacks deployed before the package was made find this provider (README, "Layout")."""

from gpu_nodes.providers.claims import ClaimProvider

__all__ = ["ClaimProvider"]
