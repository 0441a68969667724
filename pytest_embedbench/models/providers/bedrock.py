"""``bedrock:`` embeddings on AWS Bedrock through boto3's ``bedrock-runtime`` invoke_model.

Two families:

* Titan Text Embeddings V2 (``bedrock:amazon.titan-embed-text-v2:0``): one text a request,
  ``normalize`` (True) and ``dimensions`` (256, 512 or 1024); a text is cut to 50,000
  characters.
* Cohere Embed v3/v4 on Bedrock (``bedrock:cohere.embed-english-v3``,
  ``bedrock:cohere.embed-v4:0``): ``input_type`` search_query / search_document, ``truncate``
  (``END`` for v3, ``RIGHT`` for v4); v3 refuses texts over 2,048 characters, so they are cut.

Options: ``region`` (else ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else us-east-1), ``profile``,
``endpoint_url``, plus the common ones. Credentials come from AWS's usual chain; without any the
model's tests are skipped with a reason.
"""

from __future__ import annotations

import json
import os
from typing import Any, ClassVar

from ...core.exceptions import ConfigError, MissingKeyError
from .base import EmbeddingProvider, Kind
from .registry import register_provider
from .retry import RetryDecision

INPUT_TYPES = {"query": "search_query", "document": "search_document"}
TITAN_MAX_CHARS = 50_000
COHERE_V3_MAX_CHARS = 2_048


@register_provider
class BedrockProvider(EmbeddingProvider):
    """Titan and Cohere embedding models on AWS Bedrock."""

    name = "bedrock"
    extra = "bedrock"
    sdk_module = "boto3"
    hosted = True
    max_batch_size = 96
    default_batch_size = 96
    option_names: ClassVar[frozenset[str]] = frozenset(
        {"region", "profile", "endpoint_url", "dimensions", "truncate", "server_normalize"}
    )

    #: the boto3 service the requests go to (the hosted reranker's client: the agent runtime)
    service: ClassVar[str] = "bedrock-runtime"

    @classmethod
    def family_of(cls, model: str) -> str:
        """``titan``, ``cohere`` or "" (a model this provider cannot embed with)."""
        lowered = model.lower()
        if "titan-embed-text" in lowered:
            return "titan"
        return "cohere" if "cohere.embed" in lowered else ""

    def __init__(self, model: str = "", **options: Any) -> None:
        lowered = model.lower()
        self.family = self.family_of(model)
        if self.family == "titan":
            if int(options.get("batch_size", 1)) != 1:
                raise ConfigError("bedrock Titan embeds one text a request: leave batch_size at 1")
            options = {**options, "batch_size": 1}
        super().__init__(model, **options)
        if not self.family:
            raise ConfigError(
                f"bedrock model {model!r}: supported families are Titan Text Embeddings V2 "
                "(amazon.titan-embed-text-v2:0) and Cohere Embed (cohere.embed-...)"
            )
        self.v4 = "embed-v4" in lowered
        default_truncate = "RIGHT" if self.v4 else "END"
        self.truncate = str(self.options.get("truncate", default_truncate)).upper()
        dims = self.options.get("dimensions")
        if dims is not None and self.family == "titan" and int(dims) not in (256, 512, 1024):
            raise ConfigError(f"bedrock Titan dimensions={dims!r}: use 256, 512 or 1024")

    def load(self) -> None:
        boto3 = self.sdk()
        from botocore.config import Config

        region = (
            self.options.get("region")
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        session = boto3.Session(profile_name=self.options.get("profile"), region_name=region)
        credentials = session.get_credentials()
        if credentials is None:
            raise MissingKeyError(
                f"bedrock:{self.model} needs AWS credentials: set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE (or the profile option), or run where an "
                "instance role is available"
            )
        frozen = credentials.get_frozen_credentials()
        self._secrets.extend(s for s in (frozen.secret_key, frozen.token) if s)
        self._client = session.client(
            self.service,
            endpoint_url=self.options.get("endpoint_url"),
            config=Config(
                retries={"total_max_attempts": 1},  # one attempt: the base class retries
                read_timeout=self.timeout,
                connect_timeout=min(self.timeout, 10.0),
                max_pool_connections=max(10, self.max_concurrency),
            ),
        )
        self.info.update(region=region, family=self.family, truncate=self.truncate)

    def namespace(self) -> dict[str, Any]:
        ns = super().namespace()
        ns.update(family=self.family, truncate=self.truncate)
        return ns

    def _invoke(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self._client.invoke_model(
            modelId=self.model,
            body=json.dumps(body),
            accept="application/json",
            contentType="application/json",
        )
        return json.loads(response["body"].read())

    def embed_batch(self, texts: list[str], *, kind: Kind) -> Any:
        if self.family == "titan":
            body: dict[str, Any] = {
                "inputText": texts[0][:TITAN_MAX_CHARS],
                "normalize": bool(self.options.get("server_normalize", True)),
            }
            if self.options.get("dimensions") is not None:
                body["dimensions"] = int(self.options["dimensions"])
            return [self._invoke(body)["embedding"]]
        if not self.v4:
            texts = [t[:COHERE_V3_MAX_CHARS] for t in texts]
        payload = self._invoke(
            {
                "texts": texts,
                "input_type": INPUT_TYPES[kind],
                "truncate": self.truncate,
                "embedding_types": ["float"],
            }
        )
        embeddings = payload["embeddings"]
        return embeddings["float"] if isinstance(embeddings, dict) else embeddings

    def classify_error(self, exc: BaseException) -> RetryDecision | None:
        code = (
            getattr(exc, "response", {}).get("Error", {}).get("Code")
            if hasattr(exc, "response") and isinstance(getattr(exc, "response", None), dict)
            else None
        )
        if code in ("ThrottlingException", "ServiceUnavailableException", "ModelNotReadyException"):
            return RetryDecision()
        return super().classify_error(exc)
