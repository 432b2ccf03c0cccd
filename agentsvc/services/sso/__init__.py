"""Single sign-on for a team: OpenID Connect (SAML 2.0 and SCIM share the settings later)."""
