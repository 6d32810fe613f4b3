"""doit task factories, one module per artifact family. Thin: they declare tasks and
call into `continuity`; no benchmark logic lives here."""
