"""What a picture costs a page: no hidden grid, one number formatter per page, the grids that are drawn kept."""
import panel as pn
from bokeh.document import Document
from bokeh.models import CategoricalAxis, FactorRange, Grid, LinearAxis, Range1d
from panel.io.state import set_curdoc

from lineare.app.components.plots import MatrixPicture, new_figure, number_format, style_figure
from lineare.app.dashboards.architectures.pictures import EigenPicture


def grids(fig):
    return [r for r in fig.center if isinstance(r, Grid)]


def test_pictures_have_axes_but_no_grid_unless_they_draw_one():
    fig = new_figure(x_range=Range1d(0, 1), y_range=FactorRange("a", "b"))
    assert grids(fig) == []
    assert isinstance(fig.below[0], LinearAxis) and isinstance(fig.left[0], CategoricalAxis)
    assert len(grids(new_figure(grid=True))) == 2
    assert len(grids(new_figure(x_axis_type="log", y_axis_type="log"))) == 2       # Bokeh's own, for log axes
    eigen = EigenPicture().figure                                                  # its x grid is drawn
    assert [g.visible for g in grids(eigen) if g.dimension == 0] == [True]


def test_a_page_shares_one_formatter_per_number_format():
    doc, other = Document(), Document()
    with set_curdoc(doc):
        first, second = MatrixPicture("a", "x", "y", 4, 4), MatrixPicture("b", "x", "y", 4, 4)
        assert first.figure.xaxis[0].formatter is second.figure.yaxis[0].formatter
        assert number_format(decimals=2, fixed=True) is number_format(decimals=2, fixed=True)
        assert number_format(decimals=2, fixed=True) is not number_format()
        mine = number_format()
    with set_curdoc(other):
        assert number_format() is not mine                       # never shared between sessions
    fig = style_figure(new_figure(), "x", "y")                       # outside a session: its own
    assert fig.xaxis[0].formatter is not style_figure(new_figure(), "x", "y").xaxis[0].formatter
    assert pn.state.curdoc is None


def test_a_renderer_gets_no_spare_glyphs_unless_its_picture_can_select():
    """The look of points not selected and the look when muted: BokehJS makes its own ("auto") where it
    draws them, so Python makes them only for a picture with a tap, or when asked for."""
    from bokeh.models import ColumnDataSource

    from lineare.app.dashboards.memory_fails.pictures import QueriesPicture

    fig = new_figure(tools="hover")
    line = fig.line(x="x", y="y", source=ColumnDataSource({"x": [], "y": []}))
    assert (line.nonselection_glyph, line.muted_glyph) == ("auto", "auto")
    faint = fig.scatter(x="x", y="y", source=ColumnDataSource({"x": [], "y": []}), nonselection_fill_alpha=0.5)
    assert faint.nonselection_glyph.fill_alpha == 0.5 and faint.muted_glyph == "auto"
    bars, column, check, cross = QueriesPicture(lambda _query: None).figure.renderers   # a tap picks a query
    assert bars.nonselection_glyph.fill_alpha == 1.0 and bars.nonselection_glyph.line_alpha == 1.0
    assert column.nonselection_glyph.fill_alpha == 0 == column.selection_glyph.fill_alpha   # what a tap hits: unseen
    assert check.nonselection_glyph.text_alpha == 0.1 == cross.nonselection_glyph.text_alpha   # as Bokeh's own


def test_each_number_axis_has_a_ticker_of_its_own():
    # the browser takes ticks away from an axis whose labels run together on a narrow picture (plots.py,
    # spaceTicks): a ticker shared by the page's axes took them from every axis, and flip-flopped between sizes
    doc = Document()
    with set_curdoc(doc):
        first, second = new_figure(), new_figure(grid=True, y_range=FactorRange("a", "b"))
        axes = [*first.xaxis, *first.yaxis, *second.xaxis]
        assert len({id(axis.ticker) for axis in axes}) == 3
        assert [grid.axis for grid in grids(second)] == [second.xaxis[0], second.yaxis[0]]


def test_a_page_shares_its_sources_selection_policy_and_its_views_filter_of_every_row():
    from bokeh.models import AllIndices, CDSView, ColumnDataSource, IndexFilter

    doc = Document()
    with set_curdoc(doc):
        fig = new_figure()
        lines = [fig.line(x="x", y="y", source=ColumnDataSource({"x": [], "y": []})) for _ in range(3)]
        assert len({id(line.data_source.selection_policy) for line in lines}) == 1
        assert len({id(line.view.filter) for line in lines}) == 1 and isinstance(lines[0].view.filter, AllIndices)
        own = IndexFilter(indices=[0])
        assert CDSView(filter=own).filter is own                  # one given is kept
    assert ColumnDataSource().selection_policy is not ColumnDataSource().selection_policy   # outside a session
