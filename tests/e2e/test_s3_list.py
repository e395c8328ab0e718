"""Listing through boto3: v1 and v2, prefix, delimiter, common prefixes, paging with
markers, continuation tokens and start-after, url encoding, byte order."""

import pytest

from s3util import client, new_bucket

KEYS = [
    "a", "a/1", "a/2", "a/b/1", "a/b/2", "b", "b/x/y", "c/1", "c/2", "c/3",
    "d", "é", "z/1", "~",
]


@pytest.fixture(scope="module")
def listed(eddy):
    s3 = client(eddy)
    name = new_bucket(s3, "list")
    for k in KEYS:
        s3.put_object(Bucket=name, Key=k, Body=k.encode())
    return s3, name


def byte_order(keys):
    return sorted(keys, key=lambda k: k.encode())


def test_v2_flat_and_byte_order(listed):
    s3, b = listed
    r = s3.list_objects_v2(Bucket=b)
    assert [o["Key"] for o in r["Contents"]] == byte_order(KEYS)
    assert r["KeyCount"] == len(KEYS) and not r["IsTruncated"]
    assert r["Contents"][0]["Size"] == 1 and r["Contents"][0]["ETag"].startswith('"')


def test_delimiter_and_prefix(listed):
    s3, b = listed
    r = s3.list_objects_v2(Bucket=b, Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a", "b", "d", "~", "é"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "c/", "z/"]
    r = s3.list_objects_v2(Bucket=b, Prefix="a/", Delimiter="/")
    assert [o["Key"] for o in r["Contents"]] == ["a/1", "a/2"]
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/b/"]
    r = s3.list_objects(Bucket=b, Prefix="c/")
    assert [o["Key"] for o in r["Contents"]] == ["c/1", "c/2", "c/3"]


@pytest.mark.parametrize("delimiter", ["", "/"])
@pytest.mark.parametrize("page", [1, 2, 3, 5])
def test_paging_v2_and_v1_visit_everything_once(listed, delimiter, page):
    s3, b = listed
    full = s3.list_objects_v2(Bucket=b, Delimiter=delimiter)
    want = [o["Key"] for o in full.get("Contents", [])] + [p["Prefix"] for p in full.get("CommonPrefixes", [])]

    got, kw = [], {}
    while True:
        r = s3.list_objects_v2(Bucket=b, Delimiter=delimiter, MaxKeys=page, **kw)
        entries = [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        assert len(entries) <= page and r["KeyCount"] == len(entries)
        got += entries
        if not r["IsTruncated"]:
            break
        kw = {"ContinuationToken": r["NextContinuationToken"]}
    assert sorted(got) == sorted(want) and len(got) == len(want)

    got, marker = [], ""
    while True:
        r = s3.list_objects(Bucket=b, Delimiter=delimiter, MaxKeys=page, Marker=marker)
        entries = [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
        got += entries
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or r["Contents"][-1]["Key"]
    assert sorted(got) == sorted(want) and len(got) == len(want)


def test_paginator_and_start_after(listed):
    s3, b = listed
    keys = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket=b, PaginationConfig={"PageSize": 4}) for o in p["Contents"]]
    assert keys == byte_order(KEYS)
    r = s3.list_objects_v2(Bucket=b, StartAfter="c/2")
    assert [o["Key"] for o in r["Contents"]] == ["c/3", "d", "z/1", "~", "é"]
    assert s3.list_objects_v2(Bucket=b, MaxKeys=0)["KeyCount"] == 0


def test_url_encoding(listed):
    s3, b = listed
    raw = []
    s3.meta.events.register(
        "after-call.s3.ListObjectsV2",
        lambda http_response, **kw: raw.append(http_response.content.decode()),
    )
    # botocore asks for encoding-type=url by itself and decodes the keys it gets.
    r = s3.list_objects_v2(Bucket=b, Prefix="\u00e9")
    assert [o["Key"] for o in r["Contents"]] == ["\u00e9"]
    assert "<Key>%C3%A9</Key>" in raw[-1], raw[-1]
    # Asked for explicitly, the encoded form is what the caller sees.
    r = s3.list_objects_v2(Bucket=b, Prefix="\u00e9", EncodingType="url")
    assert [o["Key"] for o in r["Contents"]] == ["%C3%A9"]
    r = s3.list_objects(Bucket=b, Delimiter="/", EncodingType="url", Prefix="a")
    assert r["Prefix"] == "a" and [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"]


def test_version_paging_with_many_versions_and_prefixes(eddy):
    s3 = client(eddy)
    b = new_bucket(s3, "vpage")
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    ids = [s3.put_object(Bucket=b, Key="hot", Body=str(i).encode())["VersionId"] for i in range(40)]
    for d in range(20):
        s3.put_object(Bucket=b, Key=f"d{d:02d}/x", Body=b"x")
    for page_size in (7, 1000):
        seen, prefixes, kw = [], [], {}
        while True:
            r = s3.list_object_versions(Bucket=b, Delimiter="/", MaxKeys=page_size, **kw)
            seen += [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
            prefixes += [p["Prefix"] for p in r.get("CommonPrefixes", [])]
            if not r["IsTruncated"]:
                break
            kw = {"KeyMarker": r["NextKeyMarker"]}
            if r.get("NextVersionIdMarker"):
                kw["VersionIdMarker"] = r["NextVersionIdMarker"]
        assert prefixes == [f"d{d:02d}/" for d in range(20)]
        assert [v for _, v, _ in seen] == list(reversed(ids))
        assert [latest for _, _, latest in seen] == [True] + [False] * 39


def test_v1_url_encoding_of_prefix_marker_next_marker_and_delimiter(eddy):
    """ListObjects v1 with encoding-type=url encodes Prefix, Marker, NextMarker and
    Delimiter as AWS does (asked for explicitly, botocore hands them back as sent)."""
    s3 = client(eddy)
    b = new_bucket(s3, "enc")
    for k in ["a b/c d.txt", "a b/c e.txt", "a b/x+y.txt"]:
        s3.put_object(Bucket=b, Key=k, Body=b"x")
    r = s3.list_objects(Bucket=b, Prefix="a b/", Delimiter=" ", Marker="a b/",
                        EncodingType="url", MaxKeys=1)
    assert r["Prefix"] == "a%20b/"
    assert r["Delimiter"] == "%20"
    assert r["Marker"] == "a%20b/"
    assert r["IsTruncated"] is True
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a%20b/c%20"]
    assert r["NextMarker"] == "a%20b/c%20"
    r = s3.list_objects(Bucket=b, Prefix="a b/", Delimiter=" ", Marker="a b/c ",
                        EncodingType="url")
    assert [o["Key"] for o in r["Contents"]] == ["a%20b/x%2By.txt"]


@pytest.mark.parametrize("version", [1, 2])
def test_an_empty_delimiter_is_no_delimiter(listed, version):
    s3, b = listed
    raw = []
    op = "ListObjectsV2" if version == 2 else "ListObjects"
    s3.meta.events.register(f"after-call.s3.{op}",
                            lambda http_response, **kw: raw.append(http_response.content.decode()))
    call = s3.list_objects_v2 if version == 2 else s3.list_objects
    r = call(Bucket=b, Delimiter="")
    assert "Delimiter" not in r, r
    assert "<Delimiter>" not in raw[-1], raw[-1]
    assert [o["Key"] for o in r["Contents"]] == byte_order(KEYS)
