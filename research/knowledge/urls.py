from django.urls import path

from research.knowledge import views

app_name = "knowledge"
urlpatterns = [
    path("", views.collection_list, name="collection_list"),
    path("upload/", views.document_upload_quick, name="document_upload_quick"),
    path("<int:collection_id>/", views.collection_detail, name="collection_detail"),
    path("<int:collection_id>/upload/", views.document_upload, name="document_upload"),
    path("<int:collection_id>/statuses/", views.collection_statuses, name="collection_statuses"),
    path("<int:collection_id>/delete/", views.collection_delete, name="collection_delete"),
    path("documents/<int:document_id>/", views.document_detail, name="document_detail"),
    path("documents/<int:document_id>/delete/", views.document_delete, name="document_delete"),
]
