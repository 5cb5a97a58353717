"""Where pins become environments: interpreter choice, the per-ref uv project, and the content-addressed sync."""
