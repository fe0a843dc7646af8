"""What an (eps, delta) claim allows an attacker: posterior ceilings, column bounds and attack bounds."""
