// Package store keeps go-mdraid's slot records (md.Records) outside the
// process: File in one file, Memory in memory, both in the file format
// that Encode writes and Decode checks. Both implement md.Store, so
// md.Manager.Heal and package md/watch can use them.
//
// # Format
//
// A record file is one JSON object naming its format (Format) and its
// version (Version), with a SHA-256 checksum over the rest (see Encode).
// Decode refuses anything but exactly what Encode writes: a file that is
// not JSON, names another format, has unknown or missing fields, a wrong
// checksum or invalid records is refused with an *Error matching
// ErrCorrupt, an unknown version with one matching ErrVersion, so that a
// damaged file is never acted on.
//
// The format grows by new top-level fields beside "arrays" (check
// cursors, say): the checksum covers the whole object, so a new field is
// covered too, and a reader that does not know a field refuses the file
// rather than rewriting it without the field.
//
// # Writing
//
// File.Save replaces the file atomically (a temporary file in the same
// directory, fsynced, renamed over the old one, and the directory
// fsynced), so a crash leaves the old records or the new ones.
package store
