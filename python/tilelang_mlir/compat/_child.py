"""Imported by the forkserver of a process that called `install()` (see
`_serve_workers`): the worker processes it forks serve `tilelang` too, so
that they can import the program that started them."""

from . import install

install(force=True)
