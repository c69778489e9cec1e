"""Building the P4 program and finding and installing its toolchain (p4c, BMv2): what the
project needs around the control plane, not the control plane. `python -m tooling.build`
compiles p4src/ (a build profile: control_plane/profiles.py), `tooling.toolchain` finds the
tools (P4AQM_P4C, P4AQM_BMV2, then /opt/p4/bin, then PATH), `python -m
tooling.p4lang_packages` installs p4lang's packages where p4lang publishes them."""
