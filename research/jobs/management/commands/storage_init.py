"""Make the file storage ready: create the S3 bucket if it is missing (a no-op on the local disk).

docker-compose's one-shot `migrate` service runs it after `migrate`, before web and workers start.
"""

from __future__ import annotations

from typing import Any

from django.core.files.storage import default_storage
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the storage bucket if the storage is S3-compatible and the bucket does not exist."

    def handle(self, *args: Any, **options: Any) -> None:
        bucket = getattr(default_storage, "bucket", None)
        if bucket is None:
            self.stdout.write("storage: local files, nothing to create")
            return
        from botocore.exceptions import ClientError

        client = default_storage.connection.meta.client  # type: ignore[attr-defined]
        try:
            client.head_bucket(Bucket=bucket.name)
            self.stdout.write(f"storage: bucket {bucket.name} exists")
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) not in ("404", "NoSuchBucket", "NotFound"):
                raise CommandError(f"storage: cannot reach bucket {bucket.name}: {exc}") from exc
            client.create_bucket(Bucket=bucket.name)
            self.stdout.write(f"storage: created bucket {bucket.name}")
