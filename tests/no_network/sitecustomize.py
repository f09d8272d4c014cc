"""On PYTHONPATH, this folder cuts a Python process off the network: its sockets may connect to this machine only
(the kernels of tests/ui/test_notebook_ui.py and tests/test_laboratories_notebook.py run so)."""
import ipaddress
import socket


def _local(address):
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str) or host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address):
        raise OSError(f"network blocked for this test: {address}")
    return _connect(self, address)


def connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address):
        raise OSError(f"network blocked for this test: {address}")
    return _connect_ex(self, address)


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
