"""Cloud provider adapters behind the ``cloudprovider`` port."""
