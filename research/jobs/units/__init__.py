"""The worker side of jobs: one module per kind of unit of work, the lease protocol and the reaper."""
