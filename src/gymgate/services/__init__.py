"""Where environments become running Gym services: the run's Ray cluster, one Gym actor per
acceptance environment, their hardened lifecycle and the final process sweep."""
