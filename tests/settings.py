"""Test settings: the test environment first, then the real settings module."""

import tests.envsetup  # noqa: F401  (sets os.environ before the settings read it)
from research.settings import *  # noqa: F403

# Fast hashing for users made in tests; processes the tests start verify these too (see envsetup).
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                    "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
