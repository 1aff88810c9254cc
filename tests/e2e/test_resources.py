"""The resource family over the socket: the served folders' files, and the fence round them."""

from __future__ import annotations

import asyncio
import base64
import os
import tempfile
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_grants import cli
from tests.support.client import Client, RpcError
from tests.support.server import ServerProcess

ROOT = "ahp-root://"
READ_LIMIT = 4096


@pytest.fixture(scope="module")
def served():
    with tempfile.TemporaryDirectory(prefix="ahpd-served-") as path:
        yield Path(path).resolve()


@pytest.fixture(scope="module")
def server(served):
    # The second served folder holds the server's own data directory, which stays fenced off.
    paths = os.pathsep.join((str(served), tempfile.gettempdir()))
    process = ServerProcess(
        env_extra={"AHPD_PATHS": paths, "AHPD_RESOURCE_READ_LIMIT_BYTES": str(READ_LIMIT)}
    ).start()
    yield process
    process.close()


@pytest.fixture(scope="module")
def tokens(server):
    made = {}
    for person, roles in (("gus", ["guest"]), ("nil", [])):
        cli(server, "user", "add", person, *[a for r in roles for a in ("--role", r)])
        made[person] = cli(server, "user", "token", person)["token"]
    return made


@pytest.fixture
async def client(server, connect) -> Client:
    client = await connect(server.url)
    await client.initialize()
    return client


@pytest.fixture
def folder(served) -> Path:
    """A fresh folder of this test's own inside the served one."""
    path = served / uuid.uuid4().hex[:8]
    path.mkdir()
    return path


async def ask(client: Client, method: str, **params):
    return await client.request(method, {"channel": ROOT, **params})


async def refused(client: Client, method: str, **params) -> RpcError:
    with pytest.raises(RpcError) as error:
        await ask(client, method, **params)
    return error.value


async def test_initialize_says_where_sessions_go_and_what_asks_for_completions(
    server, connect, served
):
    client = await connect(server.url)
    result = await client.initialize()
    assert result["defaultDirectory"] == served.as_uri()
    assert result["completionTriggerCharacters"] == ["/", "@", "#"]


async def test_a_file_is_written_read_and_resolved(client, folder):
    uri = (folder / "notes.md").as_uri()
    assert await ask(client, "resourceWrite", uri=uri, data="# hello\n", encoding="utf-8") == {}
    read = await ask(client, "resourceRead", uri=uri)
    assert read == {"data": "# hello\n", "encoding": "utf-8", "contentType": "text/markdown"}
    as_base64 = await ask(client, "resourceRead", uri=uri, encoding="base64")
    assert base64.b64decode(as_base64["data"]) == b"# hello\n"
    resolved = await ask(client, "resourceResolve", uri=uri)
    assert resolved["uri"] == uri and resolved["type"] == "file" and resolved["size"] == 8
    assert resolved["etag"] and resolved["mtime"].endswith("Z")

    png = bytes([0x89, 0x50, 0x4E, 0x47, 0, 1, 2, 255])
    image = (folder / "dot.png").as_uri()
    await ask(
        client, "resourceWrite", uri=image, data=base64.b64encode(png).decode(), encoding="base64"
    )
    read = await ask(client, "resourceRead", uri=image)
    assert read["encoding"] == "base64" and read["contentType"] == "image/png"
    assert base64.b64decode(read["data"]) == png


async def test_two_writers_with_one_etag_one_wins_and_the_other_is_told(client, folder):
    uri = (folder / "shared.txt").as_uri()
    await ask(client, "resourceWrite", uri=uri, data="first", encoding="utf-8")
    etag = (await ask(client, "resourceResolve", uri=uri))["etag"]
    await ask(client, "resourceWrite", uri=uri, data="winner", encoding="utf-8", ifMatch=etag)
    late = await refused(
        client, "resourceWrite", uri=uri, data="loser", encoding="utf-8", ifMatch=etag
    )
    assert late.code == -32011 and uri in late.message
    assert (folder / "shared.txt").read_text() == "winner"
    exists = await refused(
        client, "resourceWrite", uri=uri, data="again", encoding="utf-8", createOnly=True
    )
    assert exists.code == -32010
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], "no temporary left"


async def test_the_write_modes_place_data_where_the_protocol_says(client, folder):
    path = folder / "modes.txt"
    uri = path.as_uri()
    await ask(client, "resourceWrite", uri=uri, data="abcdef", encoding="utf-8")
    await ask(client, "resourceWrite", uri=uri, data="XY", encoding="utf-8", mode="append")
    assert path.read_text() == "abcdefXY"
    await ask(
        client, "resourceWrite", uri=uri, data="-", encoding="utf-8", mode="append", position=2
    )
    assert path.read_text() == "abcdef-XY"
    await ask(
        client, "resourceWrite", uri=uri, data="+", encoding="utf-8", mode="insert", position=1
    )
    assert path.read_text() == "a+bcdef-XY"
    await ask(client, "resourceWrite", uri=uri, data="!", encoding="utf-8", position=3)
    assert path.read_text() == "a+b!"
    past = await refused(
        client, "resourceWrite", uri=uri, data="x", encoding="utf-8", mode="insert", position=99
    )
    assert past.code == -32602 and "position 99" in past.message
    bad = await refused(client, "resourceWrite", uri=uri, data="x", encoding="utf-16")
    assert bad.code == -32602 and "encoding" in bad.message
    assert path.read_text() == "a+b!"


async def test_folders_are_listed_made_copied_moved_and_deleted(client, folder):
    (folder / "b.txt").write_text("b")
    (folder / "a").mkdir()
    deep = folder / "x" / "y" / "z"
    assert await ask(client, "resourceMkdir", uri=deep.as_uri()) == {}
    assert deep.is_dir()
    listed = await ask(client, "resourceList", uri=folder.as_uri())
    assert listed == {
        "entries": [
            {"name": "a", "type": "directory"},
            {"name": "b.txt", "type": "file"},
            {"name": "x", "type": "directory"},
        ]
    }
    over_file = await refused(client, "resourceMkdir", uri=(folder / "b.txt").as_uri())
    assert over_file.code == -32010

    await ask(
        client,
        "resourceCopy",
        source=(folder / "b.txt").as_uri(),
        destination=(folder / "a" / "c.txt").as_uri(),
    )
    assert (folder / "a" / "c.txt").read_text() == "b"
    taken = await refused(
        client,
        "resourceMove",
        source=(folder / "b.txt").as_uri(),
        destination=(folder / "a" / "c.txt").as_uri(),
        failIfExists=True,
    )
    assert taken.code == -32010 and (folder / "b.txt").exists()
    await ask(
        client,
        "resourceMove",
        source=(folder / "b.txt").as_uri(),
        destination=(folder / "d.txt").as_uri(),
    )
    assert not (folder / "b.txt").exists() and (folder / "d.txt").read_text() == "b"

    not_empty = await refused(client, "resourceDelete", uri=(folder / "x").as_uri())
    assert not_empty.code == -32602 and deep.is_dir()
    await ask(client, "resourceDelete", uri=(folder / "x").as_uri(), recursive=True)
    assert not (folder / "x").exists()
    gone = await refused(client, "resourceResolve", uri=(folder / "x").as_uri())
    assert gone.code == -32008


async def test_nothing_outside_the_served_folders_is_reached(client, server, served, folder):
    outside = Path(tempfile.mkdtemp(prefix="ahpd-outside-", dir="/var/tmp"))
    (outside / "secret.txt").write_text("keep out")
    (folder / "way-out").symlink_to(outside)
    attempts = [
        outside.as_uri() + "/secret.txt",
        served.as_uri() + "/../../../../etc/passwd",
        (folder / "way-out" / "secret.txt").as_uri(),
        folder.as_uri() + "/..%2F..%2Fetc%2Fpasswd",
        (server.data_dir / "secret-key").as_uri(),
        server.data_dir.as_uri(),
    ]
    for uri in attempts:
        error = await refused(client, "resourceRead", uri=uri)
        assert (error.code, error.message) == (-32009, f"Permission denied: {uri}"), uri
        error = await refused(client, "resourceWrite", uri=uri, data="x", encoding="utf-8")
        assert error.code == -32009, uri
    assert (outside / "secret.txt").read_text() == "keep out"
    listed = await ask(client, "resourceList", uri=folder.as_uri())
    assert "way-out" not in [e["name"] for e in listed["entries"]]
    link = await ask(
        client, "resourceResolve", uri=(folder / "way-out").as_uri(), followSymlinks=False
    )
    assert link["type"] == "symlink"
    root = await refused(client, "resourceDelete", uri=served.as_uri(), recursive=True)
    assert root.code == -32009 and served.is_dir()
    scheme = await refused(client, "resourceRead", uri="untitled:Untitled-1")
    assert scheme.code == -32602 and "file: URIs" in scheme.message


async def test_a_read_past_the_limit_is_refused_naming_it(client, folder):
    big = folder / "big.bin"
    big.write_bytes(b"x" * (READ_LIMIT + 1))
    error = await refused(client, "resourceRead", uri=big.as_uri())
    assert error.code == -32602 and str(READ_LIMIT) in error.message
    assert "AHPD_RESOURCE_READ_LIMIT_BYTES" in error.message


async def test_a_guest_reads_and_may_not_write_and_nobody_reads_without_a_role(
    server, connect, tokens, folder
):
    (folder / "read-me.txt").write_text("hi")
    guest = await connect(server.url, token=tokens["gus"])
    await guest.initialize()
    read = await ask(guest, "resourceRead", uri=(folder / "read-me.txt").as_uri())
    assert read["data"] == "hi"
    error = await refused(
        guest, "resourceWrite", uri=(folder / "new.txt").as_uri(), data="x", encoding="utf-8"
    )
    assert (error.code, error.message) == (-32009, "user:gus may not file:put here")
    assert not (folder / "new.txt").exists()
    nobody = await connect(server.url, token=tokens["nil"])
    await nobody.initialize()
    error = await refused(nobody, "resourceRead", uri=(folder / "read-me.txt").as_uri())
    assert (error.code, error.message) == (-32009, "user:nil may not file:get here")


async def test_a_session_works_only_inside_a_served_folder(client, folder):
    outside = Path(tempfile.mkdtemp(prefix="ahpd-elsewhere-", dir="/var/tmp"))
    error = await refused(
        client,
        "createSession",
        channel=f"ahp-session:/{uuid.uuid4()}",
        workingDirectories=[outside.as_uri()],
    )
    assert error.code == -32602 and outside.as_uri() in error.message
    assert "AHPD_PATHS" in error.message


def changed(client: Client, channel: str) -> list[dict]:
    """Every change the watch channel has said to the client, in order."""
    return [
        item
        for envelope in client.actions
        if envelope["channel"] == channel and envelope["action"]["type"] == "resourceWatch/changed"
        for item in envelope["action"]["changes"]["items"]
    ]


async def test_a_watch_says_what_changes_under_its_root_as_its_globs_allow(client, folder):
    # A folder made after the watch is watched once the OS says it was made, so a file made in
    # it at once could come first: this one is there before.
    (folder / "sub").mkdir()
    params = {"uri": folder.as_uri(), "recursive": True, "excludes": {"items": ["*.log"]}}
    channel = (await ask(client, "createResourceWatch", **params))["channel"]
    assert channel.startswith("ahp-resource-watch://r/")
    assert (await ask(client, "createResourceWatch", **params))["channel"] == channel
    snapshot = (await client.request("subscribe", {"channel": channel}))["snapshot"]
    assert snapshot["state"] == {
        "root": folder.as_uri(),
        "recursive": True,
        "excludes": {"items": ["*.log"]},
    }
    (folder / "sub" / "noise.log").write_text("excluded")
    (folder / "sub" / "made.txt").write_text("by another process")
    made = (folder / "sub" / "made.txt").as_uri()
    await client.wait_for(lambda: any(c["uri"] == made for c in changed(client, channel)))
    seen = changed(client, channel)
    assert {c["type"] for c in seen if c["uri"] == made} <= {"added", "updated"}
    assert not [c for c in seen if c["uri"].endswith(".log")]

    (folder / "sub" / "made.txt").unlink()
    await client.wait_for(
        lambda: {"uri": made, "type": "deleted"} in changed(client, channel), timeout=10
    )


async def test_a_watch_is_refused_where_nothing_may_be_watched(server, connect, tokens, folder):
    client = await connect(server.url)
    await client.initialize()
    missing = (folder / "nothing-here").as_uri()
    error = await refused(client, "createResourceWatch", uri=missing)
    assert (error.code, error.message) == (-32008, f"Resource not found: {missing}")
    error = await refused(client, "createResourceWatch", uri="file:///etc")
    assert (error.code, error.message) == (-32009, "Permission denied: file:///etc")
    bogus = "ahp-resource-watch://r/bm90LWEtd2F0Y2g"
    with pytest.raises(RpcError) as unknown:
        await client.request("subscribe", {"channel": bogus})
    assert (unknown.value.code, unknown.value.message) == (
        -32001,
        f"Resource watch not found: {bogus}",
    )
    nobody = await connect(server.url, token=tokens["nil"])
    await nobody.initialize()
    error = await refused(nobody, "createResourceWatch", uri=folder.as_uri())
    assert (error.code, error.message) == (-32009, "user:nil may not file:watch here")


def relaying(theirs: str, refuse: str | None = None):
    """A client's answers for a watch over its own files: `theirs` is the channel it watches
    on; `refuse` the root (as it knows it) it will not watch."""

    async def serves(method: str, params: dict) -> dict:
        if method == "resourceResolve":
            return {"uri": params["uri"], "type": "directory"}
        if method == "createResourceWatch":
            if params["uri"] == refuse:
                raise RpcError({"code": -32009, "message": "not watched from here"})
            return {"channel": theirs}
        if method == "subscribe":
            state = {"root": "file:///home/me/project", "recursive": True}
            return {"snapshot": {"resource": theirs, "state": state, "fromSeq": 0}}
        raise RpcError({"code": -32601, "message": f"Method not found: {method}"})

    return serves


async def say_changed(client: Client, theirs: str, *items: tuple[str, str]) -> None:
    """A client says changes on the watch channel it answered, over the action envelope."""
    changes = [{"uri": uri, "type": kind} for uri, kind in items]
    await client.notify(
        "action",
        {
            "channel": theirs,
            "serverSeq": 1,
            "action": {"type": "resourceWatch/changed", "changes": {"items": changes}},
        },
    )


async def laptop_and_window(server, connect) -> tuple[str, Client, int, str, Client, str]:
    """A client (the laptop) that serves a watch over its own files on channel `theirs`, and a
    window of the same person's asking about them: the laptop's id, it, its serverSeq, its
    channel, the window, and the root of the watch as the host names it."""
    laptop_id = f"laptop-{uuid.uuid4().hex[:6]}"
    laptop = await connect(server.url, client_id=laptop_id)
    seq = (await laptop.initialize())["serverSeq"]
    theirs = f"ahp-resource-watch:/{uuid.uuid4()}"
    laptop.serves = relaying(theirs)
    window = await connect(server.url)
    await window.initialize()
    return laptop_id, laptop, seq, theirs, window, on(laptop, "/home/me/project")


async def test_a_watch_over_a_clients_files_is_asked_of_it_and_relayed(server, connect):
    laptop_id, laptop, seq, theirs, window, root = await laptop_and_window(server, connect)
    params = {"uri": root, "recursive": True, "excludes": {"items": ["*.log"]}}
    channel = (await ask(window, "createResourceWatch", **params))["channel"]
    # The root is checked first, of the client: it says whether it is there.
    assert channel.startswith("ahp-resource-watch://r/")
    assert laptop.asked == [
        ("resourceResolve", {"channel": ROOT, "uri": "file:///home/me/project"})
    ]
    snapshot = (await window.request("subscribe", {"channel": channel}))["snapshot"]
    assert snapshot["state"] == {"root": root, "recursive": True, "excludes": {"items": ["*.log"]}}
    # Answered once the laptop was asked for the watch and subscribed to the channel it gave.
    assert laptop.asked[1:] == [
        (
            "createResourceWatch",
            {
                "channel": ROOT,
                "uri": "file:///home/me/project",
                "recursive": True,
                "excludes": {"items": ["*.log"]},
            },
        ),
        ("subscribe", {"channel": theirs}),
    ]
    await say_changed(
        laptop,
        theirs,
        ("file:///home/me/project/src/a.ts", "updated"),
        ("file:///home/me/elsewhere.txt", "added"),  # not under the root: not said
    )
    seen = await window.wait_for(lambda: changed(window, channel))
    assert seen == [{"uri": on(laptop, "/home/me/project/src/a.ts"), "type": "updated"}]

    # The laptop drops and comes back: it is asked for the watch again.
    await laptop.close()
    back = await connect(server.url, client_id=laptop_id)
    back.serves = relaying(theirs)
    await back.request(
        "reconnect",
        {"channel": ROOT, "clientId": laptop_id, "lastSeenServerSeq": seq, "subscriptions": []},
    )
    await back.wait_for(lambda: ("subscribe", {"channel": theirs}) in back.asked)
    await say_changed(back, theirs, ("file:///home/me/project/new.ts", "added"))
    await window.wait_for(lambda: len(changed(window, channel)) == 2)
    assert changed(window, channel)[-1] == {
        "uri": on(laptop, "/home/me/project/new.ts"),
        "type": "added",
    }
    # Only the client asked may say a watch's changes: another's envelope is not taken.
    await say_changed(window, theirs, ("file:///home/me/project/forged.ts", "added"))
    assert (await window.wait_error_without_id())["code"] == -32601
    await back.settle()
    assert len(changed(window, channel)) == 2
    await window.assert_conforms(ROOT)


async def test_a_client_back_before_its_old_connection_closed_is_asked_again(server, connect):
    """VS Code reconnects after a network blip the server has not noticed yet: the relay on the
    old connection would say nothing more, so the new one is asked for the watch."""
    laptop_id, laptop, seq, theirs, window, root = await laptop_and_window(server, connect)
    channel = (await ask(window, "createResourceWatch", uri=root, recursive=True))["channel"]
    await window.request("subscribe", {"channel": channel})
    back = await connect(server.url, client_id=laptop_id)
    back.serves = relaying(theirs)
    await back.request(
        "reconnect",
        {"channel": ROOT, "clientId": laptop_id, "lastSeenServerSeq": seq, "subscriptions": []},
    )
    await back.wait_for(lambda: ("subscribe", {"channel": theirs}) in back.asked)
    await say_changed(back, theirs, ("file:///home/me/project/new.ts", "added"))
    seen = await window.wait_for(lambda: changed(window, channel))
    assert seen == [{"uri": on(laptop, "/home/me/project/new.ts"), "type": "added"}]


async def test_a_watch_over_a_clients_files_is_that_persons_alone(server, connect, tokens):
    laptop = await connect(server.url, client_id=f"laptop-{uuid.uuid4().hex[:6]}")
    await laptop.initialize()
    theirs = f"ahp-resource-watch:/{uuid.uuid4()}"
    laptop.serves = relaying(theirs, refuse="file:///home/me/secret")
    window = await connect(server.url)
    await window.initialize()
    root = on(laptop, "/home/me/project")
    channel = (await ask(window, "createResourceWatch", uri=root))["channel"]
    asked = len(laptop.asked)

    guest = await connect(server.url, token=tokens["gus"])
    await guest.initialize()
    # Another person may neither make a watch over the laptop nor watch one made.
    error = await refused(guest, "createResourceWatch", uri=root)
    assert (error.code, error.message) == (-32009, f"Permission denied: {root}")
    with pytest.raises(RpcError) as denied:
        await guest.request("subscribe", {"channel": channel})
    assert (denied.value.code, denied.value.message) == (-32009, f"Permission denied: {root}")
    assert len(laptop.asked) == asked
    # A client never here is the seed's -32603.
    never = "vscode-agent-client://never-here/file/-/x"
    error = await refused(window, "createResourceWatch", uri=never)
    assert (error.code, error.message) == (-32603, "No connection for authority: never-here")

    # The client's own refusal of the watch comes back to the subscriber as it gave it, the
    # subscriber does not hold the channel, and the refusal is logged.
    secret = on(laptop, "/home/me/secret")
    channel = (await ask(window, "createResourceWatch", uri=secret))["channel"]
    with pytest.raises(RpcError) as refused_watch:
        await window.request("subscribe", {"channel": channel})
    assert (refused_watch.value.code, refused_watch.value.message) == (
        -32009,
        "not watched from here",
    )
    assert server.wait_output(
        lambda line: (
            f"client {laptop.client_id} refused createResourceWatch of {secret}: -32009" in line
        )
    )


def on(client: Client, at: str = "/") -> str:
    """The client-scheme URI of a file on `client`, as VS Code writes one: an empty
    authority is `-` (`file:///work/a.ts` on client `editor` is
    `vscode-agent-client://editor/file/-/work/a.ts`)."""
    return f"vscode-agent-client://{client.client_id}/file/-{at}"


async def test_a_clients_own_files_are_asked_of_that_client(server, connect, tokens):
    laptop = await connect(server.url, client_id=f"laptop-{uuid.uuid4().hex[:6]}")
    await laptop.initialize()
    files = {"file:///home/me/notes.md": "kept on the laptop"}

    async def serves(method: str, params: dict) -> dict:
        if method == "resourceRead" and params["uri"] in files:
            return {"data": files[params["uri"]], "encoding": "utf-8"}
        if method == "resourceMove":
            files[params["destination"]] = files.pop(params["source"])
            return {}
        if method == "resourceRead" and params["uri"].startswith("untitled:"):
            return {"data": "an unsaved buffer", "encoding": "utf-8"}
        raise RpcError({"code": -32008, "message": f"Resource not found: {params['uri']}"})

    laptop.serves = serves
    # The same person, from another window: the host asks the laptop, as it knows the file.
    window = await connect(server.url)
    await window.initialize()
    read = await ask(window, "resourceRead", uri=on(laptop, "/home/me/notes.md"))
    assert read == {"data": "kept on the laptop", "encoding": "utf-8"}
    assert laptop.asked[-1] == (
        "resourceRead",
        {"channel": ROOT, "uri": "file:///home/me/notes.md"},
    )
    missing = await refused(window, "resourceRead", uri=on(laptop, "/home/me/none"))
    assert (missing.code, missing.message) == (-32008, "Resource not found: file:///home/me/none")
    await ask(
        window,
        "resourceMove",
        source=on(laptop, "/home/me/notes.md"),
        destination=on(laptop, "/home/me/moved.md"),
    )
    assert laptop.asked[-1][1]["destination"] == "file:///home/me/moved.md"
    assert "file:///home/me/moved.md" in files
    # A URI with no path of slashes is VS Code's `<scheme>!`: an editor's unsaved buffer.
    buffer = f"vscode-agent-client://{laptop.client_id}/untitled!/-/Untitled-1"
    assert (await ask(window, "resourceRead", uri=buffer))["data"] == "an unsaved buffer"
    assert laptop.asked[-1][1]["uri"] == "untitled:Untitled-1"


async def test_nobody_has_the_host_ask_another_persons_client(server, connect, tokens):
    laptop = await connect(server.url, client_id=f"laptop-{uuid.uuid4().hex[:6]}")
    await laptop.initialize()
    guest = await connect(server.url, token=tokens["gus"])
    await guest.initialize()
    # Another person's client: -32009, and the laptop is never asked.
    uri = on(laptop, "/home/me/notes.md")
    denied = await refused(guest, "resourceRead", uri=uri)
    assert (denied.code, denied.message) == (-32009, f"Permission denied: {uri}")
    denied = await refused(guest, "resourceRequest", uri=uri, read=True)
    assert (denied.code, denied.message) == (-32009, f"Permission denied: {uri}")
    assert laptop.asked == []
    # A client nobody introduced is the seed's words: the id is anybody's to choose, so saying
    # it is not here tells nobody anything (initialize already says whether an id is taken).
    nobody = f"vscode-agent-client://nobody-{uuid.uuid4().hex[:6]}/file/-/x"
    for who in (guest, laptop):
        gone = await refused(who, "resourceRead", uri=nobody)
        assert (gone.code, gone.message) == (
            -32603,
            f"No connection for authority: {nobody.split('/')[2]}",
        )


async def test_a_resource_request_is_answered_yes_and_logged(server, client, folder):
    inside = (folder / "asked.txt").as_uri()
    assert await ask(client, "resourceRequest", uri=inside, read=True) == {}
    assert await ask(client, "resourceRequest", uri=inside, write=True) == {}
    # Any URI, as the reference answers: the operation that follows is where a refusal comes.
    assert await ask(client, "resourceRequest", uri="file:///etc/passwd") == {}
    assert server.wait_output(lambda line: f"for write access to {inside}" in line)
    assert server.wait_output(lambda line: "for read access to file:///etc/passwd" in line)
    refused_write = await refused(
        client, "resourceWrite", uri="file:///etc/passwd", data="x", encoding="utf-8"
    )
    assert refused_write.code == -32009


async def test_a_resource_request_under_the_client_scheme_asks_the_client(server, connect):
    laptop = await connect(server.url, client_id=f"laptop-{uuid.uuid4().hex[:6]}")
    await laptop.initialize()

    async def serves(method: str, params: dict) -> dict:
        if params.get("write"):
            raise RpcError({"code": -32009, "message": "published read-only"})
        return {}

    laptop.serves = serves
    window = await connect(server.url)
    await window.initialize()
    uri = on(laptop, "/home/me/project")
    assert await ask(window, "resourceRequest", uri=uri, read=True) == {}
    assert laptop.asked[-1] == (
        "resourceRequest",
        {"channel": ROOT, "uri": "file:///home/me/project", "read": True},
    )
    # The client's refusal comes back as it sent it, and is logged with the method, the URI,
    # the client and the code: the one place all four are seen at once.
    no = await refused(window, "resourceRequest", uri=uri, write=True)
    assert (no.code, no.message) == (-32009, "published read-only")
    assert server.wait_output(
        lambda line: f"client {laptop.client_id} refused resourceRequest of {uri}: -32009" in line
    )


async def test_a_client_that_drops_is_waited_for_through_the_grace(server, connect):
    laptop_id = f"laptop-{uuid.uuid4().hex[:6]}"
    laptop = await connect(server.url, client_id=laptop_id)
    seq = (await laptop.initialize())["serverSeq"]
    await laptop.close()
    window = await connect(server.url)
    await window.initialize()
    uri = f"vscode-agent-client://{laptop_id}/file/-/home/me/a.txt"
    asking = asyncio.ensure_future(ask(window, "resourceRead", uri=uri))
    back = await connect(server.url, client_id=laptop_id)

    async def serves(method: str, params: dict) -> dict:
        return {"data": f"{method} {params['uri']}", "encoding": "utf-8"}

    back.serves = serves
    await back.request(
        "reconnect",
        {"channel": ROOT, "clientId": laptop_id, "lastSeenServerSeq": seq, "subscriptions": []},
    )
    assert (await asking)["data"] == "resourceRead file:///home/me/a.txt"


async def test_a_client_that_goes_while_asked_is_no_connection(server, connect):
    laptop_id = f"laptop-{uuid.uuid4().hex[:6]}"
    laptop = await connect(server.url, client_id=laptop_id)
    await laptop.initialize()
    asked = asyncio.Event()

    async def serves(method: str, params: dict) -> dict:
        asked.set()
        await asyncio.Event().wait()  # never answers: it goes first
        return {}

    laptop.serves = serves
    window = await connect(server.url)
    await window.initialize()
    uri = f"vscode-agent-client://{laptop_id}/file/-/home/me/a.txt"
    asking = asyncio.ensure_future(refused(window, "resourceRead", uri=uri))
    await asyncio.wait_for(asked.wait(), 10)
    await laptop.close()
    gone = await asking
    assert (gone.code, gone.message) == (-32603, f"No connection for authority: {laptop_id}")


# Last in the module: it restarts the server.
async def test_a_watch_channel_named_after_a_restart_is_watched_again(server, folder):
    client = await Client.open(server.url)
    try:
        await client.initialize()
        channel = (await ask(client, "createResourceWatch", uri=folder.as_uri()))["channel"]
    finally:
        await client.close()
    server.restart()
    again = await Client.open(server.url)
    try:
        await again.initialize()
        snapshot = (await again.request("subscribe", {"channel": channel}))["snapshot"]
        assert snapshot["state"] == {"root": folder.as_uri(), "recursive": False}
        (folder / "after.txt").write_text("written after the restart")
        made = (folder / "after.txt").as_uri()
        await again.wait_for(lambda: any(c["uri"] == made for c in changed(again, channel)))
    finally:
        await again.close()
        again.assert_schema_clean()
