//! A minimal HTTP/1.1 client connection (to be written).
