#ifndef LARDER_LIBPQ_LOADER_H
#define LARDER_LIBPQ_LOADER_H

/// Loads libpq (`libpq.so.5`, or the file `LARDER_LIBPQ` names) once, on
/// the PostgreSQL store's first use: 0 when it is loaded, else -1 with
/// `*error` pointing at a static message. Safe to call from any thread and
/// again after it failed (each call after a success returns 0 at once).
int larder_libpq_load(const char **error);

#endif
