"""Code written by tenants (JSON Schemas, regular expressions), made safe to run."""
