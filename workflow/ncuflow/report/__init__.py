"""What people read: the figures, the seeds' tables (summary), two runs compared, and
the results read back for notebooks."""
