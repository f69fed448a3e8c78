"""Device placement toolkit: measurement backends."""
