// The Python module xdal_example: importing it loads the operator library
// (its TORCH_LIBRARY registrations run as the shared object loads).
#include <Python.h>

static struct PyModuleDef xdal_example_module = {PyModuleDef_HEAD_INIT, "xdal_example",
                                                 "xdal_example: torch.ops.xdal_example.scaled_add", -1, nullptr,
                                                 nullptr, nullptr, nullptr, nullptr};

PyMODINIT_FUNC PyInit_xdal_example(void) { return PyModule_Create(&xdal_example_module); }
