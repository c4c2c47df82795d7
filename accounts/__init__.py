"""Who is calling: JWT authentication, token views, token revocation, admin login."""
