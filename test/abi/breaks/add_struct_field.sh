# A field appended to an extensible struct (one that starts with
# `size_t struct_size`): old callers pass their smaller size and the library
# writes only what fits.
description="field pci_bus_id appended to xdal_device_properties"
outcome=pass
expect='struct `xdal_device_properties`: field `pci_bus_id` appended'
apply() {
  subst abi/src/device.rs '(?s)(pub struct xdal_device_properties \{.*?\n)\}' \
    '$1    /// PCI bus of the device; 0 when there is none.\n    pub pci_bus_id: u32,\n}'
  subst_rs '(\n(\s*)is_simulated: [^\n]*\n)' '$1$2pci_bus_id: 0,\n'
}
