package catalog

// SetCrashHook lets the crash tests stop a commit at a named point.
func SetCrashHook(f func(point string)) { crashHook = f }
