"""The web side of jobs: pages, forms, the job WebSocket, request limits."""
