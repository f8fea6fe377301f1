"""The doctor: audits of the open files by subject, and each finding's fix."""
