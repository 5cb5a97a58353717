"""Where gymgate meets CI: what a CI log, job summary and annotations show, and the settings a CI job sets."""
