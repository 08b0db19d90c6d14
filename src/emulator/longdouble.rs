//! C `long double` arithmetic for INCRBYFLOAT and HINCRBYFLOAT, printed as Redis prints it.
