"""stackscan's build (the C sources beside this file), cached."""
