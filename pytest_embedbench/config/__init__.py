"""Configuration: embedbench.yaml (project), the option table (options) and its pieces
(optionspec): one table gives the command-line flags, the ini keys and the report's settings."""
