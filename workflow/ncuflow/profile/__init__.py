"""The profile stage: ncu over every configuration that ran to the end, and the reports
read at full precision."""
