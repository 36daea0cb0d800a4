"""Where stacks deployed before the package was made find this provider (docs/layout.md, "Layout")."""

from gpu_nodes.providers.coexistence import CoexistenceProvider

__all__ = ["CoexistenceProvider"]
