"""gymgate's stand-in for a module nemo-gym 0.2.0 imports but does not package.

nemo_gym.hf_utils (0.2.0) imports `visit_resources_server` from `scripts.update_resource_servers`, a
repository script missing from the wheel, which breaks `import nemo_gym.cli`. gymgate never uploads
datasets, the only use of that helper, so calling it is an error rather than a silent no-op.
"""


def visit_resources_server(*args, **kwargs):
    raise NotImplementedError("gymgate shim: dataset upload helpers of nemo-gym 0.2.0 are not available")
