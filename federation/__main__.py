"""`python -m federation` runs the CLI."""

from federation.cli.main import main

if __name__ == "__main__":
    main()
