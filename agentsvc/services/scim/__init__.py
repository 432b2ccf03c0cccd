"""SCIM 2.0 provisioning (RFC 7643/7644): a team's identity provider manages its people."""
