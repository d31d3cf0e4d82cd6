"""The Python frontend: tile programs parsed from their AST into tile IR."""
