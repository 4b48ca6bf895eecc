"""The measure stage: every configuration of a plan compiled, checked against its
reference and timed, in a worker process the stage supervises; the GPU each job holds."""
