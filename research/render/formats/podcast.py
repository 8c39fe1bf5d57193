"""The podcast (script -> TTS -> one ffmpeg mix, research/render/podcast.py): MP3, transcript and captions."""

from __future__ import annotations

from research.render.formats.base import OutputFile, OutputFormat, Rendered, RenderRequest, register
from research.render.formats.base import translated as _


def _render(req: RenderRequest) -> Rendered:
    from research.render.podcast import render_podcast

    if req.engine is not None and req.ctx is not None:
        script = req.engine.podcast_script(req.ctx, req.markdown)
        backend = None  # the TTS_BACKEND setting
    else:
        from research.render.podcast_script import podcast_script_from_markdown
        from research.render.tts import choose_backend

        script = podcast_script_from_markdown(req.markdown, locale=req.locale)
        backend = choose_backend(req.options.get("tts"), req.locale)
    res = render_podcast(script, req.out_dir, basename=req.stem or PODCAST.basename, backend=backend)
    req.say(f"podcast: {res.duration_s:.1f}s via {res.backend}, {len(res.chapters)} chapters")
    # The job page lists the chapters from here: a page view never opens the MP3.
    chapters = [{"start": round(c.start_s, 2), "end": round(c.end_s, 2), "title": c.title} for c in res.chapters]
    return Rendered([res.mp3, res.transcript_txt, res.transcript_vtt],
                    meta={"chapters": chapters, "duration_s": round(res.duration_s, 2)})


PODCAST = register(OutputFormat(
    kind="podcast", label=_("Podcast (MP3)"), short_label=_("podcast"), basename="podcast",
    files=(OutputFile("podcast", ".mp3", "audio/mpeg", inline=True), OutputFile("transcript", ".txt", "text/plain"),
           OutputFile("vtt", ".vtt", "text/vtt")),
    render=_render, order=30,
))
