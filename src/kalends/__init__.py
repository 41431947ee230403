"""kalends: recurring work that happens on time, exactly as promised."""

__version__ = "0.1.0"
